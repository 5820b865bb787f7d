package swap_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/swap"
)

func ExampleQueryTerms() {
	fmt.Printf("%q\n", swap.QueryTerms(`customer-id error: 3706 "O'Brien`))
	fmt.Printf("%q\n", swap.QueryTerms("数据库 AND *"))
	fmt.Printf("%q\n", swap.QueryTerms("🔥?!"))
	// Output:
	// ["custom" "id" "error" "3706" "o'brien"]
	// ["数" "据" "库" "and"]
	// []
}

func ExampleTopK() {
	top := swap.NewTopK(2)
	top.Offer(swap.Hit{DocID: 7, Score: 1.5})
	top.Offer(swap.Hit{DocID: 3, Score: 0.2})
	top.Offer(swap.Hit{DocID: 5, Score: 1.5})
	fmt.Println(top.Sorted())
	// Output: [{5 1.5 0} {7 1.5 0}]
}
