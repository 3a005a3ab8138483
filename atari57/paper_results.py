"""The IMPALA paper's published Atari-57 results (arXiv:1802.01561 v3).

- Table 4: median and mean human-normalised score of each agent, 1-30 no-op
  starts, each game's score a mean over 200 episodes.
- Table C.1: per-game scores after 200M frames of training (per game) of
  ACKTR, the Reactor, IMPALA shallow experts, IMPALA deep experts (one agent
  per game, game-specific action sets) and IMPALA deep multi-task (one agent
  for all 57 games, full action set, PBT). "N/A" cells are None.

Transcribed in ../shared/reference/impala_paper.md sections 3a-3b (the IMPALA
columns agree with a second hand-typed copy).
"""

from atari57 import scores
from impala_tf import scoring

# Table 4, percent. The medians of the IMPALA rows are lost from the PDF's
# text layer; they are recomputed exactly from Table C.1 (tested) and
# confirmed elsewhere (R2D2's Table 1 for deep experts). The A3C shallow
# median comes from a secondary source only; the A3C deep median is unknown.
TABLE_4 = {
    'A3C, shallow, experts': {'median': 54.9, 'mean': 285.9},
    'A3C, deep, experts': {'median': None, 'mean': 503.6},
    'Reactor, experts': {'median': 187.0, 'mean': None},
    'IMPALA, shallow, experts': {'median': 93.2, 'mean': 466.4},
    'IMPALA, deep, experts': {'median': 191.8, 'mean': 957.6},
    'IMPALA, deep, multi-task': {'median': 59.7, 'mean': 176.9},
}

# Table C.1 columns, in the paper's order.
_COLUMNS = ('acktr', 'reactor', 'impala_deep_multitask',
            'impala_shallow_experts', 'impala_deep_experts')

# (ale-py id, ACKTR, The Reactor, IMPALA deep multi-task, IMPALA shallow,
#  IMPALA deep).
_TABLE_C1 = (
    ('alien', 3197.10, 6482.10, 2344.60, 1536.05, 15962.10),
    ('amidar', 1059.40, 833, 136.82, 497.62, 1554.79),
    ('assault', 10777.70, 11013.50, 2116.32, 12086.86, 19148.47),
    ('asterix', 31583.00, 36238.50, 2609.00, 29692.50, 300732.00),
    ('asteroids', 34171.60, 2780.40, 2011.05, 3508.10, 108590.05),
    ('atlantis', 3433182.00, 308258, 460430.50, 773355.50, 849967.50),
    ('bank_heist', 1289.70, 988.70, 55.15, 1200.35, 1223.15),
    ('battle_zone', 8910.00, 61220, 7705.00, 13015.00, 20885.00),
    ('beam_rider', 13581.40, 8566.50, 698.36, 8219.92, 32463.47),
    ('berzerk', 927.20, 1641.40, 647.80, 888.30, 1852.70),
    ('bowling', 24.30, 75.40, 31.06, 35.73, 59.92),
    ('boxing', 1.45, 99.40, 96.63, 96.30, 99.96),
    ('breakout', 735.70, 518.40, 35.67, 640.43, 787.34),
    ('centipede', 7125.28, 3402.80, 4916.84, 5528.13, 11049.75),
    ('chopper_command', None, 37568, 5036.00, 5012.00, 28255.00),
    ('crazy_climber', 150444.00, 194347, 115384.00, 136211.50, 136950.00),
    ('defender', None, 113128, 16667.50, 58718.25, 185203.00),
    ('demon_attack', 274176.70, 100189, 10095.20, 107264.73, 132826.98),
    ('double_dunk', -0.54, 11.40, -1.92, -0.35, -0.33),
    ('enduro', 0.00, 2230.10, 971.28, 0.00, 0.00),
    ('fishing_derby', 33.73, 23.20, 35.27, 32.08, 44.85),
    ('freeway', 0.00, 31.40, 21.41, 0.00, 0.00),
    ('frostbite', None, 8042.10, 2744.15, 269.65, 317.75),
    ('gopher', 47730.80, 69135.10, 913.50, 1002.40, 66782.30),
    ('gravitar', None, 1073.80, 282.50, 211.50, 359.50),
    ('hero', None, 35542.20, 18818.90, 33853.15, 33730.55),
    ('ice_hockey', -4.20, 3.40, -13.55, -5.25, 3.48),
    ('jamesbond', 490.00, 7869.20, 284.00, 440.00, 601.50),
    ('kangaroo', 3150.00, 10484.50, 8240.50, 47.00, 1632.00),
    ('krull', 9686.90, 9930.80, 10807.80, 9247.60, 8147.40),
    ('kung_fu_master', 34954.00, 59799.50, 41905.00, 42259.00, 43375.50),
    ('montezuma_revenge', None, 2643.50, 0.00, 0.00, 0.00),
    ('ms_pacman', None, 2724.30, 3415.05, 6501.71, 7342.32),
    ('name_this_game', None, 9907.20, 5719.30, 6049.55, 21537.20),
    ('phoenix', 133433.70, 40092.20, 7486.50, 33068.15, 210996.45),
    ('pitfall', -1.10, -3.50, -1.22, -11.14, -1.66),
    ('pong', 20.90, 20.70, 8.58, 20.40, 20.98),
    ('private_eye', None, 15177.10, 0.00, 92.42, 98.50),
    ('qbert', 23151.50, 22956.50, 10717.38, 18901.25, 351200.12),
    ('riverraid', 17762.80, 16608.30, 2850.15, 17401.90, 29608.05),
    ('road_runner', 53446.00, 71168, 24435.50, 37505.00, 57121.00),
    ('robotank', 16.50, 68.50, 9.94, 2.30, 12.96),
    ('seaquest', 1776.00, 8425.80, 844.60, 1716.90, 1753.20),
    ('skiing', None, -10753.40, -8988.00, -29975.00, -10180.38),
    ('solaris', 2368.60, 2760, 1160.40, 2368.40, 2365.00),
    ('space_invaders', 19723.00, 2448.60, 199.65, 1726.28, 43595.78),
    ('star_gunner', 82920.00, 70038, 1855.50, 69139.00, 200625.00),
    ('surround', None, 6.70, -8.51, -8.13, 7.56),
    ('tennis', None, 23.30, -8.12, -1.89, 0.55),
    ('time_pilot', 22286.00, 19401, 3747.50, 6617.50, 48481.50),
    ('tutankham', 314.30, 272.60, 105.22, 267.82, 292.11),
    ('up_n_down', 436665.80, 64354.20, 82155.30, 273058.10, 332546.75),
    ('venture', None, 1597.50, 1.00, 0.00, 0.00),
    ('video_pinball', 100496.60, 469366, 20125.14, 228642.52, 572898.27),
    ('wizard_of_wor', 702.00, 13170.50, 2106.00, 4203.00, 9157.50),
    ('yars_revenge', 125169.00, 102760, 14739.41, 80530.13, 84231.14),
    ('zaxxon', 17448.00, 25215.50, 6497.00, 1148.50, 32935.50),)

_TITLES = {
    'acktr': ('ACKTR', None),
    'reactor': ('The Reactor', 'Reactor, experts'),
    'impala_deep_multitask': ('IMPALA, deep, multi-task',
                              'IMPALA, deep, multi-task'),
    'impala_shallow_experts': ('IMPALA, shallow, experts',
                               'IMPALA, shallow, experts'),
    'impala_deep_experts': ('IMPALA, deep, experts', 'IMPALA, deep, experts'),
}

# --against names of the comparison tool -> PaperRun.
PAPER_RUNS = {
    name: scoring.PaperRun(
        title=_TITLES[name][0],
        source='IMPALA paper, Table 4',
        scores={f'atari/{row[0]}': row[1 + column] for row in _TABLE_C1},
        published=(TABLE_4[_TITLES[name][1]] if _TITLES[name][1] else
                   dict.fromkeys(scores.BENCHMARK.statistics)))
    for column, name in enumerate(_COLUMNS)
}
