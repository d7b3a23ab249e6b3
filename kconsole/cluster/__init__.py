"""Everything that talks to Kafka, ZooKeeper, processes and Docker. Never imports Textual."""
