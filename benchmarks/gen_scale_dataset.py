"""Write a dataset drawn from a built snapshot: ``benchmarks.generator.dataset`` (``--help``: options)."""

from benchmarks.generator.dataset import main

if __name__ == "__main__":
    main()
