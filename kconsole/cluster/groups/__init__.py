"""Consumer, share and streams groups: the reader and the protocol messages."""
