"""Client-side assignors (``org.apache.kafka.clients.consumer``), KIP-881 rack matching included."""
