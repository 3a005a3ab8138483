"""Atari-57 (ALE): the environment wrapper, games, scores (issues 3 and 4)."""
