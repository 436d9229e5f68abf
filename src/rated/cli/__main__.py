import sys

from rated.cli import main

sys.exit(main())
