#!/bin/sh
echo "cannot prepare the environment" >&2
exit 3
