from viewer.cli import entry_point

entry_point()
