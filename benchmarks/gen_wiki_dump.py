"""Write an enwiki-shaped dump: ``support.generator.dump`` (``--help`` for its options)."""

from support.generator.dump import main

if __name__ == "__main__":
    main()
