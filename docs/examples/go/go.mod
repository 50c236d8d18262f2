module example.com/kipopt-oracle

go 1.18
