from gitbot.cli import main

raise SystemExit(main())
