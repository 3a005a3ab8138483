r"""Our Atari-57 test results beside the IMPALA paper's (Table C.1).

  python -m atari57.compare logs/atari57/test_results.json \
      --against=impala_deep_experts [--plot=comparison.png]

prints a markdown table (each game's score and human-normalised score, ours
and the paper's, and their difference; median and mean over the games
both have) and writes a PNG plot. --against: impala_shallow_experts,
impala_deep_experts, impala_deep_multitask, acktr, reactor.
"""

from atari57 import paper_results
from atari57 import scores
from impala_tf import compare

if __name__ == '__main__':
  compare.run(scores.BENCHMARK, paper_results.PAPER_RUNS,
              default_against='impala_deep_experts', level_title='game')
