"""The docker compose clusters: broker control by container, and their images."""
