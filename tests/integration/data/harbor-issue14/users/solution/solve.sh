#!/bin/bash
id -u > /tmp/agent-uid
