"""kconsole: a keyboard-driven terminal console for operating and drilling Apache Kafka clusters."""

__version__ = "0.1.0"
