"""Attempt environments: the Docker engine, attempt containers, and moving files in and out."""
