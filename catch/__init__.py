"""Catch: a small suite of real environments that learn in seconds, for
learning tests and quick experiments (`--level_name=catch/plain`)."""
