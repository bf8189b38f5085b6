#!/bin/bash
echo done > /logs/artifacts/status.txt
