"""Faithful Python ports of Kafka's production assignment algorithms: ``kafka.*`` methods."""
