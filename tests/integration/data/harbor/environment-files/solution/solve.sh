#!/bin/bash
tr a-z A-Z < input.txt > output.txt
