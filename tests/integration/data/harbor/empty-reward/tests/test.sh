#!/bin/bash
: > /logs/verifier/reward.txt
