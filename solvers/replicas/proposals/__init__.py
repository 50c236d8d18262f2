"""Ports of Kafka's *open* proposals for replica reassignment (research methods, ``proposal.*``).

Kept apart from the ``kafka.*`` ports of released code (:mod:`kipopt.solvers.replicas.placers`): each
module names the pull request and the commit it follows, and the family package lists it in
``PROVIDERS``. A replicas instance is one topic; a proposal that balances many topics at once is run
on that one topic.
"""
