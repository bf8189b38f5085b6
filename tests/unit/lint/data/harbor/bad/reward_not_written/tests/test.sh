#!/bin/bash
cd /app && test -f hello.txt
