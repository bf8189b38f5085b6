#!/bin/bash
echo done > /tmp/done.txt
