"""Partition reassignment and leader elections: the client, its records, outcomes."""
