#!/bin/bash
sleep 4 && touch /tmp/finished
