"""``python -m benchmarks``: run the benchmarks and print one table per workload
(:mod:`benchmarks.bench`)."""

from benchmarks.bench import main

if __name__ == "__main__":
    main()
