"""Exact mathematical programs (PuLP / highspy) of Kafka's assignment rules: ``exact.*`` methods."""
