"""DMLab-30 (DeepMind Lab): the environment wrapper, levels, scores (issue 5)."""
