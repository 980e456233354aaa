"""The preflight of `mama-pipeline doctor`: endpoints, input files, cross-section settings, disk room."""
