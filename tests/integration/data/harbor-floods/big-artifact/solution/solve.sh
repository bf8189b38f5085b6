#!/bin/bash
# 100 MB, incompressible: collecting it must not hold it in memory.
head -c 104857600 /dev/urandom > /tmp/collected.bin
