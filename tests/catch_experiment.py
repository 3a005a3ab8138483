"""experiment.py with the test suite's Catch levels (`catch/*`,
tests/catch.py) registered, for tests and tools that run it as a process:

  python -m tests.catch_experiment --level_name=catch/plain --logdir=...
"""

from absl import app

import experiment
from tests import pipeline_util  # pylint: disable=unused-import (Catch)

if __name__ == '__main__':
  app.run(experiment.main)
