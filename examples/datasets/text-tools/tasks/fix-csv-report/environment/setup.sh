#!/bin/sh
# Runs in the attempt container during the environment stage.
set -eu
mkdir -p /attempt/workspace/data
