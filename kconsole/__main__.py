from kconsole.cli import main

main()
