"""A quiet start: TensorFlow's C++ start-up lines (oneDNN, CPU features,
the CUDA probe and, on a machine without a GPU, its `cuInit` error line)
stay off the screen, so that a run's first line is its own. Set
TF_CPP_MIN_LOG_LEVEL to 0, 1 or 2 to see TensorFlow's log as usual."""

import os


def import_tensorflow():
  """Imports TensorFlow, its start-up lines silenced unless
  TF_CPP_MIN_LOG_LEVEL asks for them; call it before anything imports
  TensorFlow."""
  # 3: TensorFlow's C++ log drops everything below FATAL from here on.
  if os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3') != '3':
    import tensorflow  # pylint: disable=g-import-not-at-top,unused-import
    return
  # The lines printed while its libraries load come before any logging
  # setting applies: they go to /dev/null with the rest of stderr, for the
  # import only (an import error is raised after stderr is back).
  saved_stderr = os.dup(2)
  devnull = os.open(os.devnull, os.O_WRONLY)
  os.dup2(devnull, 2)
  try:
    import tensorflow  # pylint: disable=g-import-not-at-top,unused-import,redefined-outer-name
  finally:
    os.dup2(saved_stderr, 2)
    os.close(saved_stderr)
    os.close(devnull)
