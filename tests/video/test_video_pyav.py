#!/usr/bin/python3
placeholder
