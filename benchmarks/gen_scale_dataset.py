"""Write a dataset drawn from a built snapshot: ``support.generator.dataset`` (``--help``: options)."""

from support.generator.dataset import main

if __name__ == "__main__":
    main()
