"""The frozen bundle's entry script: the same console entry point as ``arena-viewer``."""

from viewer.cli import entry_point

if __name__ == "__main__":
    entry_point()
