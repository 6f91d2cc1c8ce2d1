"""asv benchmarks of vlad; the workloads and methods come from vlad.benchmarking."""
