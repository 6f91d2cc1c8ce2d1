"""``python -m vlad``: the ``vlad`` command line."""

from vlad.cli._main import main

if __name__ == "__main__":
    main(prog_name="vlad")
