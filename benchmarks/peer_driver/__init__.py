"""Drivers of peer memory systems, run in their own virtualenvs (see bench_peer)."""
