"""The 57 Atari games and their human-normalised scoring.

Each game is named by its ale-py ROM id, which is also how the IMPALA paper
names it in Table C.1 (the same 57 spellings; a test checks every id against
ale-py). Training and results use the level name `atari/<id>`.

Random and human scores are the standard table (DQN Zoo's `atari_data.py`,
random: uniformly random actions, human: a professional game tester; both
with 1-30 no-op starts and the 108,000-frame cap), with one change: the
IMPALA paper's convention of a random score of 0.0 for video_pinball (as the
Agent57 tables) instead of DQN's 16256.9. Only 0.0 reproduces the paper's
published means (466.4% / 957.6% / 176.9% recompute to 466.1% / 957.3% /
176.6%; with 16256.9 they would be 707% / 1592% / 179%), so the paper used
it; see ../shared/reference/impala_paper.md sections 3a and 5.
"""

import numpy as np

from impala_tf import scoring

SUITE = 'atari57'

# (ale-py id, random score, human score), in the paper's order.
GAMES = (
    ('alien', 227.8, 7127.7),
    ('amidar', 5.8, 1719.5),
    ('assault', 222.4, 742.0),
    ('asterix', 210.0, 8503.3),
    ('asteroids', 719.1, 47388.7),
    ('atlantis', 12850.0, 29028.1),
    ('bank_heist', 14.2, 753.1),
    ('battle_zone', 2360.0, 37187.5),
    ('beam_rider', 363.9, 16926.5),
    ('berzerk', 123.7, 2630.4),
    ('bowling', 23.1, 160.7),
    ('boxing', 0.1, 12.1),
    ('breakout', 1.7, 30.5),
    ('centipede', 2090.9, 12017.0),
    ('chopper_command', 811.0, 7387.8),
    ('crazy_climber', 10780.5, 35829.4),
    ('defender', 2874.5, 18688.9),
    ('demon_attack', 152.1, 1971.0),
    ('double_dunk', -18.6, -16.4),
    ('enduro', 0.0, 860.5),
    ('fishing_derby', -91.7, -38.7),
    ('freeway', 0.0, 29.6),
    ('frostbite', 65.2, 4334.7),
    ('gopher', 257.6, 2412.5),
    ('gravitar', 173.0, 3351.4),
    ('hero', 1027.0, 30826.4),
    ('ice_hockey', -11.2, 0.9),
    ('jamesbond', 29.0, 302.8),
    ('kangaroo', 52.0, 3035.0),
    ('krull', 1598.0, 2665.5),
    ('kung_fu_master', 258.5, 22736.3),
    ('montezuma_revenge', 0.0, 4753.3),
    ('ms_pacman', 307.3, 6951.6),
    ('name_this_game', 2292.3, 8049.0),
    ('phoenix', 761.4, 7242.6),
    ('pitfall', -229.4, 6463.7),
    ('pong', -20.7, 14.6),
    ('private_eye', 24.9, 69571.3),
    ('qbert', 163.9, 13455.0),
    ('riverraid', 1338.5, 17118.0),
    ('road_runner', 11.5, 7845.0),
    ('robotank', 2.2, 11.9),
    ('seaquest', 68.4, 42054.7),
    ('skiing', -17098.1, -4336.9),
    ('solaris', 1236.3, 12326.7),
    ('space_invaders', 148.0, 1668.7),
    ('star_gunner', 664.0, 10250.0),
    ('surround', -10.0, 6.5),
    ('tennis', -23.8, -8.3),
    ('time_pilot', 3568.0, 5229.2),
    ('tutankham', 11.4, 167.6),
    ('up_n_down', 533.4, 11693.2),
    ('venture', 0.0, 1187.5),
    ('video_pinball', 0.0, 17667.9),  # IMPALA's convention; DQN: 16256.9.
    ('wizard_of_wor', 563.5, 4756.5),
    ('yars_revenge', 3092.9, 54576.9),
    ('zaxxon', 32.5, 9173.3),)

LEVELS = tuple(f'atari/{game}' for game, _, _ in GAMES)

BENCHMARK = scoring.Benchmark(
    'Atari-57',
    baselines={f'atari/{game}': (random, human)
               for game, random, human in GAMES},
    statistics={'median': np.median, 'mean': np.mean})
