"""Write an enwiki-shaped dump: ``benchmarks.generator.dump`` (``--help`` for its options)."""

from benchmarks.generator.dump import main

if __name__ == "__main__":
    main()
