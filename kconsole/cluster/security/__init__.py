"""Clients of a (secured) cluster: settings translated per library, refusals."""
