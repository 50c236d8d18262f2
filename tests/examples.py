"""The example instances of ``instance-format.md``, shared by tests."""

TASKS_SPEC_EXAMPLE = {
    "format": 1, "family": "tasks",
    "topics": {"input": {"racks": [["r1", "r2"], ["r2", "r3"]]},
               "app-store-changelog": {"racks": [["r3", "r1"], ["r1", "r2"]]}},
    "tasks": {"0_0": {"inputs": ["input-0"], "changelogs": ["app-store-changelog-0"], "stateful": True,
                      "end_offset": 50000},
              "0_1": {"inputs": ["input-1"], "changelogs": ["app-store-changelog-1"], "stateful": True,
                      "end_offset": 48000}},
    "clients": {"p1": {"rack": "r1", "tags": {"zone": "r1", "cluster": "k1"}, "capacity": 2, "active": ["0_0"],
                       "standby": [], "lags": {"0_0": 0, "0_1": 12000}},
                "p2": {"rack": "r2", "tags": {"zone": "r2", "cluster": "k1"}, "capacity": 1, "active": ["0_1"],
                       "standby": ["0_0"], "lags": {"0_0": 40, "0_1": 0}}},
    "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": "min_traffic",
               "rack_aware_assignment_traffic_cost": 10, "rack_aware_assignment_non_overlap_cost": 1,
               "rack_aware_assignment_tags": ["zone", "cluster"]},
}

CONSUMERS_SPEC_EXAMPLE = {
    "format": 1, "family": "consumers",
    "topics": {"orders": {"racks": [["r1", "r2"], ["r2", "r3"], ["r3", "r1"]]},
               "audit": {"racks": [["r1"], ["r2"]]}},
    "members": [
        {"id": "c1", "rack": "r1", "topics": ["orders", "audit"], "owned": ["orders-0"], "generation": 3},
        {"id": "c2", "rack": "r2", "topics": ["orders"], "owned": [], "generation": 3},
    ],
}
