#!/bin/bash
head -c 1024 /dev/urandom > /tmp/collected.bin
