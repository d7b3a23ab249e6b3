"""Producing records: the request, the key -> partition trace, the send, outcomes."""
