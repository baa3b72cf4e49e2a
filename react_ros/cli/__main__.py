import sys

from react_ros.cli import main

sys.exit(main())
