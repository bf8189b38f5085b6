#!/bin/bash
sleep 6 && touch /tmp/finished
