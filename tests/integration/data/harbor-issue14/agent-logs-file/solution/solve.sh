#!/bin/bash
rm -rf /logs/agent && echo gone > /logs/agent
