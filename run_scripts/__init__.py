"""absl-flag scripts with the original release's names and flags."""
