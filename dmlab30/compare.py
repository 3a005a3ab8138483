r"""Our DMLab-30 test results beside the IMPALA paper's (Table B.1).

  python -m dmlab30.compare logs/dmlab30/test_results.json \
      --against=impala_deep_pbt_multitask [--plot=comparison.png]

prints a markdown table (each test level's score and human-normalised
score, ours and the paper's, and their difference; the mean capped at 100%
per level, as Table 3, and the uncapped mean over the levels both have) and
writes a PNG plot. --against: impala_deep_pbt_multitask, impala_experts.
"""

from dmlab30 import paper_results
from dmlab30 import scores
from impala_tf import compare

if __name__ == '__main__':
  compare.run(scores.BENCHMARK, paper_results.PAPER_RUNS,
              default_against='impala_deep_pbt_multitask', level_title='level')
