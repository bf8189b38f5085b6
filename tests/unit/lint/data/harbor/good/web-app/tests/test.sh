#!/bin/bash
curl -fsS http://main:8080/health && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
