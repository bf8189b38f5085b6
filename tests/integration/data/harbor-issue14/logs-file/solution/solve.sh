#!/bin/bash
rm -rf /logs && echo gone > /logs
