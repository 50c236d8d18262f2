"""The optimality-gap benchmark on Spark (``kipopt bench``)."""
