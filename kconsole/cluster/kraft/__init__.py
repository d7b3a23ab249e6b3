"""The local KRaft cluster, its spec and control, and the KRaft reads (the quorum)."""
